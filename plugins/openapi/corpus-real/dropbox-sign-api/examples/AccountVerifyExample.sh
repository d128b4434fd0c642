curl -X POST 'https://api.hellosign.com/v3/account/verify' \
  -u 'YOUR_API_KEY:' \
  -F 'email_address=some_user@dropboxsign.com'
