// address_of's access masks: what a device call does at a shared address, which the
// barrier planner orders it by (src/ir/op.h).
#include <gtest/gtest.h>

#include "ir/op.h"
#include "support/error.h"

namespace tl {

TEST(AddressOf, KeepsItsAccessMask) {
  Buffer s = Buffer::make("S", dtype::Float16, {int_imm(64)}, Scope::SharedDyn);
  for (AddressAccess a :
       {AddressAccess::Read, AddressAccess::Write, AddressAccess::ReadWrite, AddressAccess::ReadInFlight}) {
    Expr e = address_of(buffer_load(s, {int_imm(0)}), a);
    EXPECT_EQ(address_access(e.as<CallNode>()), a);
  }
  // Without a mask (T.address_of): both.
  Expr plain = call(Intrinsic::AddressOf, {buffer_load(s, {int_imm(0)})});
  EXPECT_EQ(address_access(plain.as<CallNode>()), AddressAccess::ReadWrite);
}

TEST(AddressOf, RejectsAnUnknownMaskNamingIt) {
  Buffer s = Buffer::make("S", dtype::Float16, {int_imm(64)}, Scope::SharedDyn);
  try {
    call(Intrinsic::AddressOf, {buffer_load(s, {int_imm(0)}), int_imm(4)});
    FAIL() << "mask 4 accepted";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("5 (a read still in flight when the call returns); got 2 argument(s), mask 4"),
              std::string::npos)
        << msg;
  }
}

}  // namespace tl
