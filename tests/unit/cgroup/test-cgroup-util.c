/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroup-util against a temporary directory standing in for cgroupfs. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "wbg-base.h"
#include "tap.h"

static const char memory_stat[] = "anon 1052672\n"
				   "file 209715200\n"
				   "file_dirty 104857600\n"
				   "file_writeback 4096\n"
				   "file_dirty_extra 7\n"
				   "shmem 0\n";

int main(void)
{
	char root[] = "/tmp/wbg-test-cg.XXXXXX", p[256];
	uint64_t v = 0;

	CHECK(keyed_file_parse_u64(memory_stat, "file_dirty", &v) == 0 && v == 104857600,
	      "file_dirty found, not confused with file_dirty_extra");
	CHECK(keyed_file_parse_u64(memory_stat, "anon", &v) == 0 && v == 1052672, "first key");
	CHECK(keyed_file_parse_u64(memory_stat, "shmem", &v) == 0 && v == 0, "last key");
	CHECK(keyed_file_parse_u64(memory_stat, "file_", &v) == -ENOENT, "a key's prefix is not a key");
	CHECK(keyed_file_parse_u64("populated 1\nfrozen 0\n", "populated", &v) == 0 && v == 1,
	      "cgroup.events");
	CHECK(keyed_file_parse_u64("file_dirty x\n", "file_dirty", &v) == -EINVAL, "non-numeric value");
	CHECK(keyed_file_parse_u64("file_dirty 12abc\n", "file_dirty", &v) == -EINVAL, "junk after value");
	CHECK(keyed_file_parse_u64("", "file_dirty", &v) == -ENOENT, "empty file");

	if (!mkdtemp(root))
		return 1;
	snprintf(p, sizeof(p), "%s/pod", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/pod/memory.stat", root);
	{
		_cleanup_close_ int fd = open(p, O_CREAT | O_WRONLY, 0644);
		CHECK(fd >= 0 && write(fd, memory_stat, sizeof(memory_stat) - 1) > 0, "fixture written");
	}
	CHECK(cg_read_keyed_u64(root, "pod", "memory.stat", "file_writeback", &v) == 0 && v == 4096,
	      "cg_read_keyed_u64 reads a cgroup file under a given root");
	CHECK(cg_read_keyed_u64(root, "gone", "memory.stat", "file_dirty", &v) == -ENOENT,
	      "a vanished cgroup is -ENOENT");
	{
		uint64_t d = 0, w = 0;

		CHECK(cg_read_dirty(root, "pod", &d, &w) == 0 && d == 104857600 && w == 4096,
		      "cg_read_dirty: both counters from one read");
		CHECK(cg_read_dirty(root, "gone", &d, &w) == -ENOENT, "cg_read_dirty of a vanished cgroup");
	}
	CHECK(cg_id(root, "pod", &v) == 0 && v > 0, "cg_id is the inode number");
	{
		uint64_t *ids = NULL;
		size_t n = 0;
		bool found = false, sorted = true;

		CHECK(cg_list_ids(root, 0, &ids, &n) == 0 && n == 2, "cg_list_ids: the root and its one child");
		for (size_t i = 0; i < n; i++) {
			found |= ids[i] == v;
			sorted &= i == 0 || ids[i - 1] < ids[i];
		}
		CHECK(found && sorted, "cg_list_ids: the child's id, sorted");
		free(ids);
		CHECK(cg_list_ids("/nonexistent", 0, &ids, &n) == -ENOENT, "cg_list_ids of no tree: -ENOENT");
	}
	unlink(p);
	CHECK(cg_rmdir(root, "pod", 100) == 0, "cg_rmdir removes an empty cgroup");
	CHECK(cg_rmdir(root, "pod", 100) == -ENOENT, "cg_rmdir of a gone cgroup is -ENOENT");
	{
		char ks[] = "/tmp/wbg-kallsyms.XXXXXX";
		int fd = mkstemp(ks);
		static const char text[] = "ffffffff81000000 T _stext\n"
					   "ffffffff89cecae0 T wb_get_lookup\n"
					   "ffffffff89cecb40 T wb_get_lookup_dying_not\n"
					   "ffffffffc0001000 t helper\t[ext4]\n";

		CHECK(fd >= 0 && write(fd, text, sizeof(text) - 1) > 0, "kallsyms fixture");
		close(fd);
		CHECK(kallsyms_has(ks, "wb_get_lookup") == 1, "symbol found");
		CHECK(kallsyms_has(ks, "wb_get_lookup_dying") == 0, "a longer name is not the symbol");
		CHECK(kallsyms_has(ks, "helper") == 1, "module symbol");
		CHECK(kallsyms_has("/nonexistent", "x") == -ENOENT, "no kallsyms: -ENOENT");
		unlink(ks);
	}
	{
		char sc[300];
		FILE *f;

		snprintf(sc, sizeof(p), "%s/cgroup.subtree_control", root);
		f = fopen(sc, "w");
		fputs("cpu io\n", f);
		fclose(f);
		CHECK(cg_memory_delegated(root) == -ENOENT, "verify: memory not delegated below the root is said");
		f = fopen(sc, "w");
		fputs("cpu io memory pids\n", f);
		fclose(f);
		CHECK(cg_memory_delegated(root) == 0, "memory delegated");
		unlink(sc);
		CHECK(cg_memory_delegated(root) == -ENOENT, "no subtree_control at all: an error");
	}
	{
		/* write_file_atomic: a symlink at its temporary's name (a
		 * hostPath state directory another container can write) is
		 * replaced, never written through */
		char target[300], state[300], tmp[310];
		_cleanup_free_ char *got = NULL, *kept = NULL;
		FILE *f;

		snprintf(target, sizeof(target), "%s/elsewhere", root);
		snprintf(state, sizeof(state), "%s/sysctl.json", root);
		snprintf(tmp, sizeof(tmp), "%s.tmp", state);
		f = fopen(target, "w");
		fputs("theirs\n", f);
		fclose(f);
		CHECK(symlink(target, tmp) == 0, "a symlink where the temporary goes");
		CHECK(write_file_atomic(state, "{\"original\":3000}\n", false, 0600) == 0, "written");
		CHECK(read_small_file_at(AT_FDCWD, target, 64, &kept) >= 0 && strcmp(kept, "theirs\n") == 0,
		      "the symlink's target is untouched");
		CHECK(read_small_file_at(AT_FDCWD, state, 64, &got) >= 0 && strcmp(got, "{\"original\":3000}\n") == 0,
		      "the state file holds what was written");
		CHECK(access(tmp, F_OK) < 0, "no temporary left");
		unlink(target);
		unlink(state);
	}
	rmdir(root);
	return tap_done();
}
