curl -X GET 'https://api.hellosign.com/v3/fax/{fax_id}' \
  -u 'YOUR_API_KEY:'
