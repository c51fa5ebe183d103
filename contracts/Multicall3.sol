// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Multicall3-compatible call aggregator for the Tollgate devchain.
/// @notice Public chains have Multicall3 at 0xcA11bde05977b3631167028862bE2a173976CA11; anvil does not.
/// The devchain places this contract's runtime code there, so clients that batch reads through it
/// (viem, the x402 facilitator's failure diagnosis) behave as on a real chain. Same ABI as Multicall3.
contract Multicall3 {
    struct Call {
        address target;
        bytes callData;
    }

    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Call3Value {
        address target;
        bool allowFailure;
        uint256 value;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    /// Every call must succeed; returns the block number and the raw results.
    function aggregate(Call[] calldata calls) public payable returns (uint256 blockNumber, bytes[] memory returnData) {
        blockNumber = block.number;
        returnData = new bytes[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory ret) = calls[i].target.call(calls[i].callData);
            require(ok, "Multicall3: call failed");
            returnData[i] = ret;
        }
    }

    /// Like aggregate, but failures are reported per call unless requireSuccess is set.
    function tryAggregate(bool requireSuccess, Call[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory ret) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) require(ok, "Multicall3: call failed");
            returnData[i] = Result(ok, ret);
        }
    }

    function tryBlockAndAggregate(bool requireSuccess, Call[] calldata calls)
        public
        payable
        returns (uint256 blockNumber, bytes32 blockHash, Result[] memory returnData)
    {
        blockNumber = block.number;
        blockHash = blockhash(block.number);
        returnData = tryAggregate(requireSuccess, calls);
    }

    function blockAndAggregate(Call[] calldata calls)
        public
        payable
        returns (uint256 blockNumber, bytes32 blockHash, Result[] memory returnData)
    {
        (blockNumber, blockHash, returnData) = tryBlockAndAggregate(true, calls);
    }

    /// Per-call allowFailure: the batch reverts only when a call that may not fail does.
    function aggregate3(Call3[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            Call3 calldata c = calls[i];
            (bool ok, bytes memory ret) = c.target.call(c.callData);
            require(ok || c.allowFailure, "Multicall3: call failed");
            returnData[i] = Result(ok, ret);
        }
    }

    /// aggregate3 with ether attached per call; msg.value must equal the sum.
    function aggregate3Value(Call3Value[] calldata calls) public payable returns (Result[] memory returnData) {
        uint256 total = 0;
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            Call3Value calldata c = calls[i];
            total += c.value;
            (bool ok, bytes memory ret) = c.target.call{value: c.value}(c.callData);
            require(ok || c.allowFailure, "Multicall3: call failed");
            returnData[i] = Result(ok, ret);
        }
        require(msg.value == total, "Multicall3: value mismatch");
    }

    function getBlockHash(uint256 blockNumber) public view returns (bytes32) {
        return blockhash(blockNumber);
    }

    function getBlockNumber() public view returns (uint256) {
        return block.number;
    }

    function getCurrentBlockCoinbase() public view returns (address) {
        return block.coinbase;
    }

    function getCurrentBlockDifficulty() public view returns (uint256) {
        return block.prevrandao;
    }

    function getCurrentBlockGasLimit() public view returns (uint256) {
        return block.gaslimit;
    }

    function getCurrentBlockTimestamp() public view returns (uint256) {
        return block.timestamp;
    }

    function getEthBalance(address addr) public view returns (uint256) {
        return addr.balance;
    }

    function getLastBlockHash() public view returns (bytes32) {
        return blockhash(block.number - 1);
    }

    function getBasefee() public view returns (uint256) {
        return block.basefee;
    }

    function getChainId() public view returns (uint256) {
        return block.chainid;
    }
}
