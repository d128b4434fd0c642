curl -X POST 'https://app.hellosign.com/oauth/token?refresh' \
  -F 'grant_type=refresh_token' \
  -F 'refresh_token=hNTI2MTFmM2VmZDQxZTZjOWRmZmFjZmVmMGMyNGFjMzI2MGI5YzgzNmE3'
