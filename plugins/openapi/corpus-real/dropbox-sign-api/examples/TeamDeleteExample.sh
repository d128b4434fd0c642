curl -X DELETE 'https://api.hellosign.com/v3/team/destroy' \
  -u 'YOUR_API_KEY:'
