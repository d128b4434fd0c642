curl -X GET 'https://api.hellosign.com/v3/fax/list?page=1&page_size=20' \
  -u 'YOUR_API_KEY:'
