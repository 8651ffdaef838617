# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
# pair-lib.sh: sourced by the tests scripts/vm-pair runs in both VMs
# (pair-wire, pair-fuzz, pair-rc, pair-bench, ...).  Needs $role (A or B)
# and $PEER.

# counter NAME: softmr0's port counter NAME (the hw_counters `rdma
# statistic` shows), 0 when this VM has no softmr0
counter() {
	cat "/sys/class/infiniband/softmr0/ports/1/hw_counters/$1" 2>/dev/null ||
		echo 0
}

# meet TAG [MSG [LIMIT]]: wait for the other VM to reach the same point (A
# listens on TCP 18599, B connects), swap MSG with it; prints the other
# VM's MSG.  Fails when the other VM does not come within LIMIT seconds
# (default 300) or is at another point.
meet() {
	# shellcheck disable=SC2154 # the caller's
	python3 - "$role" "$PEER" "$1" "${2:--}" "${3:-300}" <<'EOF'
import socket, sys, time
role, peer, tag, msg = sys.argv[1:5]
port, limit = 18599, int(sys.argv[5])
if role == 'A':
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('', port))
    ls.listen(1)
    ls.settimeout(limit)
    c = ls.accept()[0]
    ls.close()
else:
    end = time.time() + limit
    while True:
        try:
            c = socket.create_connection((peer, port), timeout=10)
            break
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.3)
c.settimeout(limit)
c.sendall(f'{tag} {msg}\n'.encode())
line = c.makefile().readline().split()
c.close()
if len(line) < 2 or line[0] != tag:
    sys.exit(f'meet {tag}: the other VM says {line}')
print(' '.join(line[1:]))
EOF
}

# gid_index DEV ADDR: DEV's RoCE v2 GID index of ADDR, an IPv4 or an IPv6
# address as ibv_devinfo writes it (a new device fills its table shortly);
# empty when there is none
gid_index() {
	local g='' _ a="::ffff:$2"
	[[ $2 == *:* ]] && a=$2
	for _ in $(seq 50); do
		g=$(ibv_devinfo -v -d "$1" | sed -n \
			"s/.*GID\[ *\([0-9]*\)\]:[[:space:]]*$a, RoCE v2.*/\1/p" | head -n1)
		[ -n "$g" ] && break
		sleep 0.2
	done
	echo "$g"
}
