curl -X POST 'https://api.hellosign.com/v3/fax_line/create' \
  -u 'YOUR_API_KEY:' \
  -F 'area_code=209' \
  -F 'country=US'
