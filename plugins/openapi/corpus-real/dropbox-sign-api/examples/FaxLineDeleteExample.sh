curl -X DELETE 'https://api.hellosign.com/v3/fax_line' \
  -u 'YOUR_API_KEY:' \
  -F 'number=[FAX_NUMBER]'
