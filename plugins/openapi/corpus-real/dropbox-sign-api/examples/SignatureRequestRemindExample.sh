curl -X POST 'https://api.hellosign.com/v3/signature_request/remind/{signature_request_id}' \
  -u 'YOUR_API_KEY:' \
  -F 'email_address=john@example.com'
