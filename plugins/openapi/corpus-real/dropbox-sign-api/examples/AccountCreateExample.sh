curl -X POST 'https://api.hellosign.com/v3/account/create' \
  -u 'YOUR_API_KEY:' \
  -F 'email_address=newuser@dropboxsign.com'
