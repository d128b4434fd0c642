curl -X GET 'https://api.hellosign.com/v3/template/files_as_data_uri/{template_id}' \
  -u 'YOUR_API_KEY:'
