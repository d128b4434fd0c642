curl -X POST 'https://api.hellosign.com/v3/embedded/edit_url/{template_id}' \
  -u 'YOUR_API_KEY:' \
  -F 'cc_roles[0]=' \
  -F 'merge_fields=[]'
