#pragma once

// gtest assertions on a grove::Status: the failure message names the expression and the status.

#include <gtest/gtest.h>

#include "grove/status.h"

#define ASSERT_OK(expr)                                     \
  do {                                                      \
    const ::grove::Status s_ = (expr);                      \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                     \
  do {                                                      \
    const ::grove::Status s_ = (expr);                      \
    EXPECT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)
