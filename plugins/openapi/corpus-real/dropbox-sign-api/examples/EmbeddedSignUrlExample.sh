curl -X GET 'https://api.hellosign.com/v3/embedded/sign_url/{signature_id}' \
  -u 'YOUR_API_KEY:'
