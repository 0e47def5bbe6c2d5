package io.pdconnector.transfer;

import io.pdconnector.transfer.loopback.LoopbackTransferEngine;

class LoopbackAgentContractTest extends TransferAgentContract {

    @Override
    protected TransferEngine openEngine() {
        return new LoopbackTransferEngine();
    }
}
