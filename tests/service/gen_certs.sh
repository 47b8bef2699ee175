#!/usr/bin/env bash
# Generates test TLS material in DIR: a CA, a server certificate for 127.0.0.1/localhost, a client
# certificate signed by the CA, and a second CA with its own client certificate (which the server
# must reject). EC P-256 keys, valid for one day. Usage: gen_certs.sh DIR
set -euo pipefail
dir=$1
cd "$dir"

make_ca() {  # name
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=$1" -keyout "$1.key" -out "$1.pem" 2>/dev/null
}

make_cert() {  # name ca extensions
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=$1" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 1 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}

make_ca ca
make_ca other-ca
make_cert server ca "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
make_cert client ca "extendedKeyUsage=clientAuth"
make_cert rogue-client other-ca "extendedKeyUsage=clientAuth"
