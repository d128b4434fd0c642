curl -X GET 'https://api.hellosign.com/v3/template/{template_id}' \
  -u 'YOUR_API_KEY:'
