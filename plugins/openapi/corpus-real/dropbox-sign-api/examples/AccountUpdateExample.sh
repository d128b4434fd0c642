curl -X PUT 'https://api.hellosign.com/v3/account' \
  -u 'YOUR_API_KEY:' \
  -F 'callback_url=https://www.example.com/callback' \
  -F 'locale=en-US'
