# Sourced: is a server on 127.0.0.1 up (sglang_env.sh on the device; dry runs here set
# HEALTH_PY=.venv/bin/python).
# healthy PORT: the server on 127.0.0.1:PORT answers /health with 200
healthy() { "${HEALTH_PY:-python3}" -c "import sys,urllib.request as u; sys.exit(u.urlopen('http://127.0.0.1:$1/health', timeout=2).status != 200)" 2>/dev/null; }
# wait_healthy PORT PID LOG [TRIES]: poll every 0.5 s, TRIES times (400), until healthy (0); if
# PID exits first, LOG's tail and 1
wait_healthy() {
  for _ in $(seq "${4:-400}"); do
    healthy "$1" && return 0
    kill -0 "$2" 2>/dev/null || { echo "server on port $1 died"; tail -n 30 "$3"; return 1; }
    sleep 0.5
  done; echo "server on port $1 not up"; return 1
}
