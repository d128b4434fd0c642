curl -X GET 'https://api.hellosign.com/v3/fax_line/list' \
  -u 'YOUR_API_KEY:'
