curl -X PUT 'https://api.hellosign.com/v3/team/add_member' \
  -u 'YOUR_API_KEY:' \
  -F 'email_address=george@example.com'
