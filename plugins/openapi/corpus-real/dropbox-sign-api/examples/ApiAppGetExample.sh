curl -X GET 'https://api.hellosign.com/v3/api_app/{client_id}' \
  -u 'YOUR_API_KEY:'
