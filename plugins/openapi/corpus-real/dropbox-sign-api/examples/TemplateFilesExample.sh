curl -X GET 'https://api.hellosign.com/v3/template/files/{template_id}?file_type=pdf' \
  -u 'YOUR_API_KEY:' \
  --output downloaded_document.pdf
