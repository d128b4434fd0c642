curl -X POST 'https://api.hellosign.com/v3/template/delete/{template_id}' \
  -u 'YOUR_API_KEY:'
