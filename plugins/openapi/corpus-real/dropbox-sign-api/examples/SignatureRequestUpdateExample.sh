curl -X POST 'https://api.hellosign.com/v3/signature_request/update/{signature_request_id}' \
  -u 'YOUR_API_KEY:' \
  -F 'email_address=john@example.com' \
  -F 'signature_id=2f9781e1a8e2045224d808c153c2e1d3df6f8f2f'
