curl -X GET 'https://api.hellosign.com/v3/team' \
  -u 'YOUR_API_KEY:'
