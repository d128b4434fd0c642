curl -X POST 'https://api.hellosign.com/v3/signature_request/release_hold/{signature_request_id}' \
  -u 'YOUR_API_KEY:'
