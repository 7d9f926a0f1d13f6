/* device.c: what kbench says when the GPU cannot be used (kb_device_why),
 * from CUDA's error codes and the driver's version, with no GPU needed; and,
 * on this machine, that kb_device_open says it in one line or opens the GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/core/errors.h"
#include "../cli/harness/device.h"

static const char *why(int err, int ndev, int driver)
{
    static char buf[512];
    size_t n = kb_device_why(err, ndev, driver, buf, sizeof buf);
    assert_true(n < sizeof buf);
    assert_null(strchr(buf, '\n'));
    return buf;
}

/* `make run` without a GPU said "no usable CUDA driver ...": the cause is now
 * named plainly, as CUDA's codes tell them apart */
static void test_no_driver(void **state)
{
    (void)state;
    const char *w = why(cudaErrorInsufficientDriver, 0, 0);
    assert_non_null(strstr(w, "no NVIDIA GPU or driver found: no NVIDIA driver is installed"));
    assert_non_null(strstr(w, "--dry-run")); /* what works without one */
}

static void test_driver_too_old(void **state)
{
    (void)state;
    const char *w = why(cudaErrorInsufficientDriver, 0, 12020);
    assert_non_null(strstr(w, "no NVIDIA GPU or driver found: the NVIDIA driver (CUDA 12.2) is older than this CUDA"));
    assert_non_null(strstr(w, "update the driver"));
    assert_non_null(strstr(why(cudaErrorCallRequiresNewerDriver, 0, 12020), "is older than"));
}

static void test_no_gpu(void **state)
{
    (void)state;
    unsetenv("CUDA_VISIBLE_DEVICES");
    assert_string_equal(why(cudaErrorNoDevice, 0, 13000), "no NVIDIA GPU or driver found: the NVIDIA driver (CUDA 13.0) sees no GPU");
    assert_string_equal(why(cudaSuccess, 0, 13000), "no NVIDIA GPU or driver found: the NVIDIA driver (CUDA 13.0) sees no GPU");
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    assert_non_null(strstr(why(cudaErrorNoDevice, 0, 13000), "CUDA_VISIBLE_DEVICES hides them?"));
    unsetenv("CUDA_VISIBLE_DEVICES");
}

static void test_other_causes(void **state)
{
    (void)state;
    assert_non_null(strstr(why(cudaErrorStubLibrary, 0, 13000), "no NVIDIA GPU or driver found: libcuda.so is the CUDA toolkit's stub"));
    assert_non_null(strstr(why(cudaErrorSystemDriverMismatch, 0, 13000), "cannot use the GPU: the NVIDIA kernel module"));
    const char *w = why(cudaErrorDevicesUnavailable, 0, 13000);
    assert_non_null(strstr(w, "cannot use the GPU: "));
    assert_non_null(strstr(w, "cudaErrorDevicesUnavailable"));
}

/* this machine: the GPU opened, or exit 3 (the line is kb_device_why's) */
static void test_open_here(void **state)
{
    (void)state;
    kb_device d;
    int rc = kb_device_open(&d);
    assert_true(rc == 0 || rc == KB_EXIT_CUDA);
    assert_int_equal(d.ok, rc == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_driver_too_old),
        cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_other_causes),
        cmocka_unit_test(test_open_here),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
