curl -X GET 'https://api.hellosign.com/v3/bulk_send_job/list?page=1&page_size=20' \
  -u 'YOUR_API_KEY:'
