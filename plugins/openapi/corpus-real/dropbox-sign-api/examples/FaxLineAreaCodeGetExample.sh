curl -X GET 'https://api.hellosign.com/v3/fax_line/area_codes' \
  -u 'YOUR_API_KEY:' \
  -F 'country=US' \
  -F 'state=CA'
