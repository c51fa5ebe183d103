// SPDX-License-Identifier: MIT
pragma solidity ^0.8.17;

import {ERC20} from "../tokens/ERC20.sol";

// Tollgate's stand-in for solmate's src/utils/SafeTransferLib.sol (AGPL-3.0-only, not vendored; see ../tokens/ERC20.sol
// here), written for this repository: the one function Permit2 calls, with the behaviour Permit2 relies on. A
// transferFrom succeeds when the call does not revert and returns nothing or the word 1 (tokens that return no
// bool pass, a token returning false fails); anything else reverts with solmate's reason, TRANSFER_FROM_FAILED.
// Like solmate's, it does not check that the token has code (Permit2 leaves that to its caller; our facilitator
// settles registered tokens only).
library SafeTransferLib {
    function safeTransferFrom(ERC20 token, address from, address to, uint256 amount) internal {
        (bool ok, bytes memory returned) =
            address(token).call(abi.encodeWithSelector(ERC20.transferFrom.selector, from, to, amount));
        require(
            ok && (returned.length == 0 || (returned.length >= 32 && abi.decode(returned, (uint256)) == 1)),
            "TRANSFER_FROM_FAILED"
        );
    }
}
