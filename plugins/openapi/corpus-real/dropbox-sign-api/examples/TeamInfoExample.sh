curl -X GET 'https://api.hellosign.com/v3/team/info?team_id=4fea99bfcf2b26bfccf6cea3e127fb8bb74d8d9c' \
  -u 'YOUR_API_KEY:'
