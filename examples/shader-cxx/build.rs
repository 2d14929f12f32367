fn main() {
    cargo_mcpp::build();
}
