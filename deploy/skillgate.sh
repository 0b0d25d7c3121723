#!/bin/sh
# The operator's `skillgate`: runs as the service user with the service's settings.
# Install: install -m 755 /opt/skillgate/deploy/skillgate.sh /usr/local/bin/skillgate
umask 027  # what it creates in the data dir stays private, as under the service's UMask
exec sudo -u skillgate /opt/skillgate/.venv/bin/skillgate \
    --env-file /etc/skillgate/skillgate.env "$@"
