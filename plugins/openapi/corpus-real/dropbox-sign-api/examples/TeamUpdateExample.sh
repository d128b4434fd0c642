curl -X PUT 'https://api.hellosign.com/v3/team' \
  -u 'YOUR_API_KEY:' \
  -F 'name=New Team Name'
