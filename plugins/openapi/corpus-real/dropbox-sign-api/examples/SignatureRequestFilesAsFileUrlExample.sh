curl -X GET 'https://api.hellosign.com/v3/signature_request/files_as_file_url/{signature_request_id}' \
  -u 'YOUR_API_KEY:'
