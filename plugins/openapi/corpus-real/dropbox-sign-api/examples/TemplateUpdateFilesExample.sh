curl -X POST 'https://api.hellosign.com/v3/template/update_files/{template_id}' \
  -u 'YOUR_API_KEY:' \
  -F 'files[0]=@mutual-NDA-example.pdf' \
