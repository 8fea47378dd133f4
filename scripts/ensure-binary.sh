# Sourced by the service scripts (after they define say and die): ensure_binary BINARY PACKAGE
# [HINT] makes BINARY available, installing the Debian PACKAGE with apt-get when missing and
# running as root; HINT is added, on lines of its own, to the message when it cannot.
apt_updated=0
ensure_binary() {
  local hint=${3:+.
$3}
  command -v "$1" >/dev/null 2>&1 && return 0
  [[ -x /usr/sbin/$1 ]] && { PATH="$PATH:/usr/sbin"; return 0; }
  [[ $(id -u) -eq 0 ]] || die "$1 is not installed and we are not root: install the Debian package $2 (sudo apt-get install $2)$hint"
  command -v apt-get >/dev/null 2>&1 || die "$1 is not installed and apt-get is missing: install $2 yourself$hint"
  say "installing $2 with apt-get"
  if [[ $apt_updated -eq 0 ]]; then apt-get update -qq >/dev/null; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null
  command -v "$1" >/dev/null 2>&1 || [[ -x /usr/sbin/$1 ]] || die "installing $2 did not provide $1"
  PATH="$PATH:/usr/sbin"
}
