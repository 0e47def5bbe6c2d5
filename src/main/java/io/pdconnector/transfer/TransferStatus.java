package io.pdconnector.transfer;

/** The non-error outcomes of a READ poll; errors are thrown as {@link TransferException}. */
public enum TransferStatus {
    IN_PROGRESS,
    DONE
}
