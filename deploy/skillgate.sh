#!/bin/sh
# The operator's `skillgate`: runs as the service user with the service's settings.
# Install: install -m 755 /opt/skillgate/deploy/skillgate.sh /usr/local/bin/skillgate
exec sudo -u skillgate /opt/skillgate/.venv/bin/skillgate \
    --env-file /etc/skillgate/skillgate.env "$@"
