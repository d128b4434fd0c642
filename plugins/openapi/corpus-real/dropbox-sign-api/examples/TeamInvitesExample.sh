curl -X GET 'https://api.hellosign.com/v3/team/invites?email_address=user@dropboxsign.com' \
  -u 'YOUR_API_KEY:'
