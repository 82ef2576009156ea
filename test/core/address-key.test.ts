import { describe, expect, it } from "vitest";
import { addressKey } from "../../src/core/address-key.js";

describe("addressKey", () => {
  it.each([
    ["192.0.2.7", 56, "192.0.2.7"],
    ["2001:db8:1234:5678:9abc::1", 56, "2001:db8:1234:5600::/56"],
    ["2001:db8:1234:56ff:ffff:ffff:ffff:ffff", 56, "2001:db8:1234:5600::/56"],
    ["2001:db8:1234:5678::1", 64, "2001:db8:1234:5678::/64"],
    ["2001:db8:1234:57ff::", 55, "2001:db8:1234:5600::/55"],
    ["::1", 56, "::/56"],
    ["fe80::1%eth0", 64, "fe80::/64"],
    ["2001:DB8::1", 128, "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", 128, "2001:db8::1:0:0:1"],
    ["1:0:0:2:0:0:0:3", 128, "1:0:0:2::3"],
    ["::ffff:192.0.2.1", 96, "192.0.2.1"],
    ["::ffff:192.0.2.1", 56, "192.0.2.1"],
    // The other spellings of one IPv4-mapped address: none may put its client in ::/56 with every other.
    ["::FFFF:c000:0201", 56, "192.0.2.1"],
    ["0:0:0:0:0:ffff:192.0.2.1", 56, "192.0.2.1"],
    ["0000::ffff:c000:201", 128, "192.0.2.1"],
    ["::ffff:0:c000:201", 56, "::/56"],
  ])("%s by /%i is %s", (address, prefix, key) => {
    expect(addressKey(address, prefix)).toBe(key);
  });
});
