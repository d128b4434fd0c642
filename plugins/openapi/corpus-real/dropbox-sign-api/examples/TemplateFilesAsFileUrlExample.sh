curl -X GET 'https://api.hellosign.com/v3/template/files_as_file_url/{template_id}' \
  -u 'YOUR_API_KEY:'
