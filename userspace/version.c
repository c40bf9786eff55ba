// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl version: the tool, the uAPI it was built against, the module.
 */
#include <unistd.h>

#include <krdma.h>

#include "krdmactl.h"
#include "names.h"
#include "print.h"

static const char version_usage[] =
	"Usage: " PROG_NAME " version [OPTIONS]\n"
	"Show the versions of krdmactl, of the uAPI it was built against and,\n"
	"through KRDMA_GET_INFO, of the loaded krdma.ko with its features,\n"
	"opcodes and transports.\n"
	"\n"
	"  -j, --json      JSON output\n"
	"      --pretty    pretty-printed JSON (implies -j)\n"
	"  -h, --help      this help\n";

static void print_tool(void)
{
	pr_obj_begin("krdmactl");
	pr_str("version", KRDMACTL_VERSION);
	pr_u64("abi_version", KRDMA_ABI_VERSION);
	pr_obj_end();
}

static void print_module(const struct krdma_info *info)
{
	pr_obj_begin("module");
	pr_u64("abi_version", info->abi_version);
	pr_str("module_version", info->module_version);
	pr_u64("bench_protocol", info->bench_protocol);
	pr_u64("num_devices", info->num_devices);
	pr_u64("num_device_contexts", info->num_device_contexts);
	pr_nl();
	pr_bits("features", info->features, feature_names, nr_feature_names);
	pr_nl();
	pr_bits("ops", info->ops, opcode_names, nr_opcode_names);
	pr_nl();
	pr_bits("transports", info->transports, transport_names,
		nr_transport_names);
	pr_obj_end();
}

/* Returns 0 or -errno, reporting nothing: the tool's version comes first. */
static int get_info(int fd, struct krdma_info *info)
{
	int ret;

	*info = (struct krdma_info){ .size = sizeof(*info) };
	ret = krdma_ioctl_quiet(fd, KRDMA_GET_INFO, info);
	info->module_version[sizeof(info->module_version) - 1] = '\0';
	return ret;
}

int cmd_version(int argc, char **argv)
{
	struct krdma_info info;
	int fd, ret;

	ret = parse_common_opts("version", argc, argv, version_usage);
	if (ret)
		return ret < 0 ? 0 : ret;

	fd = krdma_open();
	if (fd >= 0) {
		ret = get_info(fd, &info);
		close(fd);
	}

	pr_obj_begin(NULL);
	print_tool();
	if (fd >= 0 && !ret)
		print_module(&info);
	pr_obj_end();
	pr_finish();

	if (fd < 0) {
		krdma_report_open(fd);
		return 1;
	}
	if (ret) {
		krdma_report(KRDMA_GET_INFO, ret);
		return 1;
	}
	if (info.abi_version != KRDMA_ABI_VERSION)
		warn_msg("krdma.ko has ABI version %u, " PROG_NAME
			 " was built for %u", info.abi_version,
			 KRDMA_ABI_VERSION);
	return 0;
}
