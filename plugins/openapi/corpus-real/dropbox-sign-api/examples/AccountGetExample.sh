curl -X GET 'https://api.hellosign.com/v3/account?email_address=jack@example.com' \
  -u 'YOUR_API_KEY:'
