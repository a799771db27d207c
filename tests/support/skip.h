// Skipping a test that cannot run here, with a message a person sees in the
// test output.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

// Skips the current test (from the test body or a fixture's SetUp) with
// `why` when the process is not root.
#define VIGIL_SKIP_UNLESS_ROOT(why)              \
  do {                                           \
    if (::geteuid() != 0) GTEST_SKIP() << (why); \
  } while (0)
