curl -X POST 'https://api.hellosign.com/v3/team/create' \
  -u 'YOUR_API_KEY:' \
  -F 'name=New Team Name'
