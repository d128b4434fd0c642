curl -X GET 'https://api.hellosign.com/v3/bulk_send_job/{bulk_send_job_id}' \
  -u 'YOUR_API_KEY:'
