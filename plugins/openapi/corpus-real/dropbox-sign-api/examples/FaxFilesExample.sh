curl -X GET 'https://api.hellosign.com/v3/fax/files/{fax_id}' \
  -u 'YOUR_API_KEY:' \
  --output downloaded_document.pdf