curl -X POST 'https://api.hellosign.com/v3/fax_line/remove_user' \
  -u 'YOUR_API_KEY:' \
  -F 'number=[FAX_NUMBER]' \
  -F 'email_address=member@dropboxsign.com'
