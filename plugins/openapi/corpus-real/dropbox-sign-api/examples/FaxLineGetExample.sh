curl -X GET 'https://api.hellosign.com/v3/fax_line?number=[FAX_NUMBER]' \
  -u 'YOUR_API_KEY:'
