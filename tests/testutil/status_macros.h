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

// Evaluates a StatusOr expression, asserts it is OK and assigns (or declares) `lhs` with its value.
#define GROVE_TEST_CONCAT_(a, b) a##b
#define GROVE_TEST_CONCAT(a, b) GROVE_TEST_CONCAT_(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(GROVE_TEST_CONCAT(status_or_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)                   \
  auto tmp = (expr);                                                 \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().ToString(); \
  lhs = std::move(tmp).value()
