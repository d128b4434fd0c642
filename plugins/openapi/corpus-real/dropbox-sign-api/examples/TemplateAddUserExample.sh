curl -X POST 'https://api.hellosign.com/v3/template/add_user/{template_id}' \
  -u 'YOUR_API_KEY:' \
  -F 'email_address=george@dropboxsign.com'
