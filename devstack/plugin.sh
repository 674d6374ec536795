#!/bin/bash
# shellcheck shell=bash
# DevStack plugin for nova-cacheaware: installs the package, adds the
# scheduler filters and weighers to nova.conf, writes the recommended
# Placement settings, installs the live-migration libvirt hook and runs the
# agent on compute nodes, and creates example flavors.

# Nova's own default enabled_filters (nova 34), used when nova.conf has none.
NOVA_CACHEAWARE_NOVA_DEFAULT_FILTERS="ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter"

# The recommended settings of doc/source/admin/placement.rst and
# scheduler.rst, the one place that lists them: one per line,
#   SERVICE CONFIG-FILE-VARIABLE SECTION OPTION VALUE
# written on the nodes that run SERVICE. When the Placement model or its
# recommended settings change, change this table (and the docs) only.
NOVA_CACHEAWARE_RECOMMENDED_SETTINGS="
placement-api PLACEMENT_CONF placement max_allocation_candidates 1000
placement-api PLACEMENT_CONF placement allocation_candidates_generation_strategy breadth-first
placement-api PLACEMENT_CONF placement allocation_conflict_retry_count 1
n-sch NOVA_CONF scheduler max_placement_results 1000
"

function install_nova_cacheaware {
    setup_develop "$NOVA_CACHEAWARE_DIR"
}

# Append $2 to the comma-separated list $1 unless it is already there.
function _cacheaware_list_add {
    local list=$1 item=$2
    if [[ ",$list," == *",$item,"* ]]; then
        echo "$list"
    elif [[ -z "$list" ]]; then
        echo "$item"
    else
        echo "$list,$item"
    fi
}

function configure_nova_cacheaware_scheduler {
    local conf=$NOVA_CONF filters weighers name
    if ! iniget_multiline "$conf" filter_scheduler available_filters \
            | grep -q nova.scheduler.filters.all_filters; then
        iniadd "$conf" filter_scheduler available_filters \
            nova.scheduler.filters.all_filters
    fi
    if ! iniget_multiline "$conf" filter_scheduler available_filters \
            | grep -q nova_cacheaware.scheduler.filters.all_filters; then
        iniadd "$conf" filter_scheduler available_filters \
            nova_cacheaware.scheduler.filters.all_filters
    fi
    filters=$(iniget "$conf" filter_scheduler enabled_filters)
    filters=${filters:-$NOVA_CACHEAWARE_NOVA_DEFAULT_FILTERS}
    for name in ${NOVA_CACHEAWARE_FILTERS//,/ }; do
        filters=$(_cacheaware_list_add "$filters" "$name")
    done
    iniset "$conf" filter_scheduler enabled_filters "$filters"
    weighers=$(iniget "$conf" filter_scheduler weight_classes)
    weighers=${weighers:-nova.scheduler.weights.all_weighers}
    weighers=$(_cacheaware_list_add "$weighers" \
        nova_cacheaware.scheduler.weights.all_weighers)
    iniset "$conf" filter_scheduler weight_classes "$weighers"
}

function configure_nova_cacheaware_recommended {
    local service conf_var section option value
    while read -r service conf_var section option value; do
        [[ -z "$service" ]] && continue
        is_service_enabled "$service" || continue
        iniset "${!conf_var}" "$section" "$option" "$value"
    done <<< "$NOVA_CACHEAWARE_RECOMMENDED_SETTINGS"
}

# The RabbitMQ policies every deployment needs (deploy/rabbitmq/): a cap on
# the default queue nobody reads and expiry of stopped schedulers' queues.
# On the node that runs RabbitMQ, on DevStack's vhost (the notification bus
# the agents publish to).
function configure_nova_cacheaware_rabbit_policies {
    sudo bash "$NOVA_CACHEAWARE_DIR/deploy/rabbitmq/cacheaware-policies.sh" \
        -p "${NOVA_CACHEAWARE_RABBIT_VHOST:-/}"
}

# The hook keeps live migrations of agent-pinned guests from failing; it
# never replaces another program's hook (ours then goes to qemu.d/).
function install_nova_cacheaware_hook {
    local out
    out=$(sudo "$NOVA_BIN_DIR/nova-cacheaware" install-hook \
        --hooks-dir "$NOVA_CACHEAWARE_LIBVIRT_HOOKS_DIR" \
        --pin-record-dir "$NOVA_CACHEAWARE_STATE_DIR/pins")
    echo "$out"
    # libvirtd looks for hooks only when it starts.
    if [[ "$out" == *'"restart_libvirtd": true'* ]]; then
        restart_service "${LIBVIRT_DAEMON:-libvirtd}"
    fi
}

function configure_nova_cacheaware_agent {
    local conf=$NOVA_CACHEAWARE_AGENT_CONF
    sudo install -d -o "$STACK_USER" "$NOVA_CACHEAWARE_CONF_DIR"
    touch "$conf"
    iniset "$conf" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    # The state goes to the bus nova-scheduler listens on: the notification
    # bus DevStack writes into nova.conf, never the compute's own bus (with
    # CELLSV2_SETUP=superconductor, DevStack's default, that is its cell's).
    # The agent makes no RPC call, so it has no [DEFAULT] transport_url.
    iniset "$conf" oslo_messaging_notifications transport_url \
        "$(get_notification_url)"
    iniset "$conf" oslo_messaging_notifications driver messagingv2
    iniset "$conf" agent libvirt_uri "qemu:///system"
    # Declared workloads from the flavors; report to Placement and the
    # scheduler; run-time capabilities act only on flavors that opt in.
    iniset "$conf" agent spec_source nova
    iniset "$conf" agent report_placement True
    iniset "$conf" agent notifications True
    iniset "$conf" agent capabilities "$NOVA_CACHEAWARE_AGENT_CAPABILITIES"
    # The agent runs as $STACK_USER (as nova-compute does) and writes its
    # pin records; the libvirt hook, root, reads them.
    sudo install -d -o "$STACK_USER" "$NOVA_CACHEAWARE_STATE_DIR"
    iniset "$conf" agent pin_record_dir "$NOVA_CACHEAWARE_STATE_DIR/pins"
    # Its privsep daemon (perf counters, the kvm:kvm_exit tracepoint) is the
    # privsep-helper of the agent's own virtualenv, started through sudo
    # with the agent's configuration: oslo.privsep's default, "sudo
    # privsep-helper", would take the one on sudo's secure_path.
    iniset "$conf" nova_cacheaware_privileged helper_command \
        "sudo $NOVA_BIN_DIR/privsep-helper --config-file $conf"
    local section
    for section in nova placement; do
        iniset "$conf" "$section" auth_type password
        iniset "$conf" "$section" auth_url "$KEYSTONE_SERVICE_URI"
        iniset "$conf" "$section" username nova
        iniset "$conf" "$section" password "$SERVICE_PASSWORD"
        iniset "$conf" "$section" user_domain_name "$SERVICE_DOMAIN_NAME"
        iniset "$conf" "$section" project_name "$SERVICE_PROJECT_NAME"
        iniset "$conf" "$section" project_domain_name "$SERVICE_DOMAIN_NAME"
        iniset "$conf" "$section" region_name "$REGION_NAME"
    done
    iniset "$conf" nova interface public
    iniset "$conf" placement valid_interfaces public
    iniset "$conf" placement provider_model "$NOVA_CACHEAWARE_PROVIDER_MODEL"
}

# Unprivileged, in libvirt's group, as nova-compute runs; what needs more
# goes through the privsep daemon (doc/source/admin/agent.rst, Privileges).
function start_nova_cacheaware_agent {
    run_process cacheaware-agent \
        "$NOVA_BIN_DIR/nova-cacheaware-agent --config-file $NOVA_CACHEAWARE_AGENT_CONF" \
        "$LIBVIRT_GROUP"
}

function create_nova_cacheaware_flavors {
    local name vcpus ram
    while read -r name vcpus ram; do
        if ! openstack flavor show "$name" >/dev/null 2>&1; then
            openstack flavor create --vcpus "$vcpus" --ram "$ram" --disk 1 \
                "$name" >/dev/null
        fi
        nova-cacheaware flavor set "$name" --cache-share all \
            --workload memory --cache-clean preferred
    done <<FLAVORS
cacheaware.mem.small 2 512
cacheaware.mem.medium 4 1024
FLAVORS
}

if is_service_enabled n-sch n-api n-cpu cacheaware-agent; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing nova-cacheaware"
        install_nova_cacheaware
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        if is_service_enabled n-sch; then
            echo_summary "Configuring nova-cacheaware scheduler plugins"
            configure_nova_cacheaware_scheduler
        fi
        echo_summary "Writing nova-cacheaware's recommended settings"
        configure_nova_cacheaware_recommended
        if is_service_enabled rabbit; then
            echo_summary "Setting nova-cacheaware's RabbitMQ policies"
            configure_nova_cacheaware_rabbit_policies
        fi
        if is_service_enabled n-cpu && is_service_enabled cacheaware-agent; then
            echo_summary "Configuring nova-cacheaware-agent"
            configure_nova_cacheaware_agent
            echo_summary "Installing nova-cacheaware's libvirt hook"
            install_nova_cacheaware_hook
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        if is_service_enabled n-cpu && is_service_enabled cacheaware-agent; then
            echo_summary "Starting nova-cacheaware-agent"
            start_nova_cacheaware_agent
        fi
        if is_service_enabled n-api && [[ "$NOVA_CACHEAWARE_CREATE_FLAVORS" == "True" ]]; then
            echo_summary "Creating nova-cacheaware example flavors"
            create_nova_cacheaware_flavors
        fi
    fi
    if [[ "$1" == "unstack" ]]; then
        stop_process cacheaware-agent
    fi
    if [[ "$1" == "clean" ]]; then
        sudo rm -rf "$NOVA_CACHEAWARE_CONF_DIR" "$NOVA_CACHEAWARE_STATE_DIR"
    fi
fi
