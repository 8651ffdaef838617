# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The clients people run on RDMA, from Debian's packages, in the VM suite
# (sourced by run-all, whose pair, gid3, cm_up and cm_down it uses): each
# run's data or result is checked, and softmr and rxe are run side by side
# where both work.  What cannot work, and why, is in the README.

# rxe0 on a dummy netdev of its own (rdma_cm does not route over lo).
RXE_IP=10.77.1.1
rxe_up() {
	ip link add smrx0 type dummy && ip addr add $RXE_IP/24 dev smrx0 &&
	ip link set smrx0 up && rdma link add rxe0 type rxe netdev smrx0
}
rxe_down() { rdma link del rxe0; ip link del smrx0; }

# counter NAME [DEV]: a counter of DEV (softmr1) from rdma statistic
counter() {
	rdma statistic show link "${2:-softmr1}/1" | tr ' ' '\n' |
		awk -v n="$1" 'f {print; exit} $0 == n {f = 1}'
}

# libfabric's verbs provider: fi_info lists softmr, fi_mr_reg/fi_mr_regattr
# (userspace/tests/softmr_fi_mr.c), fi_pingpong with data checks (-c) over
# a MSG endpoint, a DGRAM endpoint and the RDM endpoint
# of verbs;ofi_rxm, and MSG on ODP registrations (FI_VERBS_USE_ODP=1).
fi_pp() {	# fi_pp NAME ENV PROVIDER EP DOMAIN SIZE ADDR
	pair "fi-$1" "env $2 fi_pingpong -p '$3' -e $4 -d $5 -I 200 -S $6 -c" \
		"env $2 fi_pingpong -p '$3' -e $4 -d $5 -I 200 -S $6 -c $7" ||
		return 1
	grep -qE "^[0-9]+k? +200 +=200 " "/tmp/fi-$1.cli" ||
		{ echo "fi_pingpong $1: no result"; cat "/tmp/fi-$1.cli"; return 1; }
	awk '/=200/ {print "fi_pingpong '"$1"':", $6, "MB/s,", $7, "us/xfer"}' "/tmp/fi-$1.cli"
}
t_libfabric() {
	local rc=0 f0 f1
	fi_info -p verbs | grep -q 'domain: softmr0$' ||
		{ echo "fi_info -p verbs does not list softmr0"; rc=1; }
	fi_info -p 'verbs;ofi_rxm' | grep -q 'domain: softmr0$' ||
		{ echo "fi_info -p verbs;ofi_rxm does not list softmr0"; rc=1; }
	cm_up || return 1
	# fi_mr_reg / fi_mr_regattr (FI_HMEM_SYSTEM), their errors, and
	# the registrations used by fi_write / fi_read / fi_send
	"$B/softmr_fi_mr" softmr1 $CM_IP || rc=1
	fi_pp msg "" verbs msg softmr1 4096 $CM_IP || rc=1
	fi_pp dgram "" verbs dgram softmr1-dgram 1024 $CM_IP || rc=1
	fi_pp rdm "" 'verbs;ofi_rxm' rdm softmr1 65536 $CM_IP || rc=1
	f0=$(counter odp_faults)
	fi_pp msg-odp FI_VERBS_USE_ODP=1 verbs msg softmr1 65536 $CM_IP || rc=1
	f1=$(counter odp_faults)
	[ "${f1:-0}" -gt "${f0:-0}" ] ||
		{ echo "FI_VERBS_USE_ODP=1 made no ODP faults ($f0 -> $f1)"; rc=1; }
	if rxe_up; then
		fi_pp msg-rxe "" verbs msg rxe0 4096 $RXE_IP || rc=1
		rxe_down
	else
		echo "rxe0: cannot create it"; rc=1
	fi
	cm_down
	return $rc
}

# UCX (Debian's ucx-utils): ucx_info lists softmr0's rc_verbs and ud_verbs;
# ucx_perftest over UCT (rc_verbs and ud_verbs directly) and UCP (rc_verbs
# with ud_verbs for wire-up), also with ODP registrations.  UCX's UD
# transport reads a RoCE datagram's L3 header type from the completion's
# SL, as ConnectX reports it (Documentation: "UD completions"); rxe does
# not, so UCX's UD transport does not run on rxe.
ucx_pt() {	# ucx_pt NAME ENV ARGS...: both sides, a Final line
	local name=$1 env=$2
	shift 2
	pair "ucx-$name" "env $env ucx_perftest $* -n 2000" \
		"env $env ucx_perftest $* -n 2000 127.0.0.1" || return 1
	grep -qE '^Final: +2000 ' "/tmp/ucx-$name.cli" ||
		{ echo "ucx_perftest $name: no result"; tail -5 "/tmp/ucx-$name.cli"; return 1; }
	awk '/^Final:/ {print "ucx_perftest '"$name"':", $0}' "/tmp/ucx-$name.cli"
}
# ucp_put_bw on ODP registrations.  UCX 1.13 then crashes in ucp_cleanup
# after the test (uct_ib_md_close() calls the registration method's release
# after md->ops->cleanup; later UCX releases swap the two): a crash there,
# after the Final line, is that bug; anywhere else it fails the test.
ucx_odp() {
	local env="$1 UCX_IB_REG_METHODS=odp" f spid
	timeout $PAIR_TIMEOUT sh -c "env $env ucx_perftest -t ucp_put_bw -s 65536 -n 2000" \
		>/tmp/ucx-odp.srv 2>&1 &
	spid=$!
	wait_listen $spid
	timeout $PAIR_TIMEOUT sh -c "env $env ucx_perftest -t ucp_put_bw -s 65536 -n 2000 127.0.0.1" \
		>/tmp/ucx-odp.cli 2>&1
	wait $spid
	for f in /tmp/ucx-odp.srv /tmp/ucx-odp.cli; do
		if grep -q 'Caught signal' $f &&
		   ! grep -A8 'Caught signal' $f | grep -q 'uct_ib_md_close'; then
			echo "ucx_perftest on ODP crashed elsewhere:"; cat $f; return 1
		fi
	done
	grep -qE '^Final: +2000 ' /tmp/ucx-odp.cli ||
		{ echo "ucx_perftest on ODP: no result"; tail -20 /tmp/ucx-odp.cli; return 1; }
	awk '/^Final:/ {print "ucx_perftest ucp-put-bw-odp:", $0}' /tmp/ucx-odp.cli
}

t_ucx() {
	local rc=0 t ucp="UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=softmr0:1" f0 f1
	ucx_info -d >/tmp/ucx_info.txt 2>&1
	for t in rc_verbs ud_verbs; do
		grep -A1 "Transport: $t" /tmp/ucx_info.txt | grep -q 'Device: softmr0:1' ||
			{ echo "ucx_info -d: no $t on softmr0:1"; rc=1; }
	done
	ucx_pt uct-rc-am-lat "" -d softmr0:1 -x rc_verbs -t am_lat -s 8 || rc=1
	ucx_pt uct-rc-put-zcopy "" -d softmr0:1 -x rc_verbs -t put_bw -D zcopy -s 65536 || rc=1
	ucx_pt uct-ud-am-lat "" -d softmr0:1 -x ud_verbs -t am_lat -s 8 || rc=1
	ucx_pt ucp-put-bw "$ucp" -t ucp_put_bw -s 65536 || rc=1
	ucx_pt ucp-get "$ucp" -t ucp_get -s 65536 || rc=1
	ucx_pt ucp-am-bw "$ucp" -t ucp_am_bw -s 8192 || rc=1
	ucx_pt ucp-tag-lat "$ucp" -t tag_lat -s 8 || rc=1
	ucx_pt ucp-ud-tag-lat "UCX_TLS=ud_verbs,self UCX_NET_DEVICES=softmr0:1" -t tag_lat -s 8 || rc=1
	f0=$(counter odp_faults softmr0)
	ucx_odp "$ucp" || rc=1
	f1=$(counter odp_faults softmr0)
	[ "${f1:-0}" -gt "${f0:-0}" ] ||
		{ echo "UCX_IB_REG_METHODS=odp made no ODP faults ($f0 -> $f1)"; rc=1; }
	return $rc
}

# qperf over rdma_cm (-cm1; without it qperf builds RoCE address handles
# without a GRH, which ib_core refuses on every RoCE device): the RC tests,
# softmr1 and rxe0 side by side.  qperf's UD tests do not take -cm1, so
# they cannot run on RoCE (rxe alike).
QPERF_TESTS="rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw rc_rdma_read_lat rc_compare_swap_mr rc_fetch_add_mr"
qperf_run() {	# qperf_run ADDR OUT
	timeout $PAIR_TIMEOUT qperf -cm1 -t 2 "$1" $QPERF_TESTS >"$2" 2>&1 || return 1
	[ "$(grep -cE '= +[0-9.]+ [A-Za-z/]+' "$2")" = "$(echo $QPERF_TESTS | wc -w)" ] ||
		{ echo "qperf $1: not every test gave a result"; cat "$2"; return 1; }
}
t_qperf() {
	local rc=0 qpid
	cm_up || return 1
	rxe_up || { echo "rxe0: cannot create it"; rc=1; }
	qperf >/tmp/qperf.srv 2>&1 &
	qpid=$!
	wait_listen $qpid
	qperf_run $CM_IP /tmp/qperf.softmr || rc=1
	[ $rc = 0 ] && { qperf_run $RXE_IP /tmp/qperf.rxe || rc=1; }
	kill $qpid
	wait $qpid 2>/dev/null
	paste /tmp/qperf.softmr /tmp/qperf.rxe 2>/dev/null | sed 's/^/qperf softmr | rxe: /'
	rxe_down
	cm_down
	return $rc
}

# rdma-core's examples that the other tests do not run: UC pingpong (data
# checked), XRC SRQ pingpong (refused: no XRC), riostream (rsockets'
# RDMA-mapped I/O, data verified).
t_examples() {
	local g rc=0
	g=$(gid3)
	pair uc "ibv_uc_pingpong -d softmr0 -g $g -n 500 -c" \
		"ibv_uc_pingpong -d softmr0 -g $g -n 500 -c 127.0.0.1" || rc=1
	# softmr has no XRC: the domain is refused with EOPNOTSUPP (95)
	ibv_xsrq_pingpong -d softmr0 -g $g -n 1 >/tmp/xsrq.out 2>&1 &&
		{ echo "ibv_xsrq_pingpong ran"; rc=1; }
	grep -q "Couldn't Open the XRC Domain 95" /tmp/xsrq.out ||
		{ echo "ibv_xsrq_pingpong:"; cat /tmp/xsrq.out; rc=1; }
	cm_up || return 1
	pair riostream "riostream -b $CM_IP -S 65536 -C 50 -T v" \
		"riostream -s $CM_IP -S 65536 -C 50 -T v" || rc=1
	cm_down
	return $rc
}
