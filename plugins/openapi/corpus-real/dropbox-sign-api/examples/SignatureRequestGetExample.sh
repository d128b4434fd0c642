curl -X GET 'https://api.hellosign.com/v3/signature_request/{signature_request_id}' \
  -u 'YOUR_API_KEY:'
