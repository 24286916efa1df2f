!> two_mass_flex_f: the flexible side of the two-mass oscillator
!> (scenarios/two_mass_oscillator_mtx.toml) in Fortran, over the rbcosim_client module, on
!> rbcosim's own flexible body (module body_endpoint: the library rbcosim_flex on a body file,
!> the kernels rbcosim's FlexBody and FlexEndpoint call). It follows PROTOCOL.md section 7a,
!> so the rigid side's results equal `rbcosim run`'s. The body file:
!>
!>   rbcosim export-body scenarios/two_mass_oscillator_mtx.toml --body structure -o FILE.body
!>
!> (with the session's --set overrides where they touch the body or the macro step).
!>
!>   two_mass_flex_f ENDPOINT (--scenario FILE | --session ID) --body FILE.body [options]
!>     --scenario FILE   create a session of FILE (a path the server can read), print its id
!>     --session ID      join a session (e.g. the one `rbcosim cosim --serve-external` serves)
!>     --set KEY=VALUE   a scenario override for --scenario (repeatable)
!>     --body FILE       the structure's body file (required)
!>     --point NAME, --joint NAME   default "interface", "coupling"
!>     --timeout S       seconds to wait for any reply (default 120)
!>     --close           close the session at the end (default: leave it for its results)
program two_mass_flex
  use, intrinsic :: iso_c_binding, only: c_ptr, c_double, c_int, c_associated
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit
  use rbcosim_client
  use body_endpoint
  implicit none
  integer, parameter :: dp = c_double

  character(len=:), allocatable :: endpoint, scenario, session, body, point, joint, message
  character(len=256), allocatable :: keys(:), values(:)
  character(len=:), allocatable :: scheme
  real(dp) :: timeout_s
  logical :: close_at_end
  type(c_ptr) :: client
  type(rbc_coupling) :: coupling
  type(rbc_exchange) :: ex
  type(c_ptr) :: ep
  real(c_double), pointer :: mot(:, :)
  real(dp) :: t, motion(19), kin(13), energy, mass(36), coeff(6, 4)
  integer :: i, rows, scheme_id
  integer(kind(ex%step)) :: k
  integer(c_int) :: want

  call parse_arguments()
  client = rbcf_connect(endpoint, nint(1000 * timeout_s), error=message)
  if (.not. c_associated(client)) call fail("cannot connect to " // endpoint // ": " // message)
  call check(rbcf_hello(client, "two_mass_flex_f (Fortran)"), "hello")
  if (allocated(scenario)) then
    call check(rbcf_create_session(client, scenario_path=scenario, override_keys=keys, &
                                   override_values=values, wait_for_joints=.true.), &
               "create_session")
    write (output_unit, "(a)") "session " // rbcf_session_id(client)
    flush (output_unit)
  else
    call check(rbcf_join_session(client, session), "join_session")
  end if
  call check(rbcf_attach(client, [point], [joint], coupling, ex, &
                         name="two_mass_flex_f " // joint), "attach")
  scheme = rbcf_scheme(coupling)
  select case (scheme)
  case ("jacobi", "gauss_seidel_rigid_first", "gauss_seidel_flex_first")
  case default
    call fail("coupling scheme " // scheme // " is not one this example runs")
  end select
  scheme_id = bef_scheme_of(scheme)
  if (ex%step /= 0) call fail("the session is not at step 0: a fresh solver starts a run")
  if (coupling%macro_step <= 0) call fail("the coupling has no macro step")
  ep = bef_open(body, scheme_id, int(coupling%extrapolation), coupling%macro_step, &
                int(coupling%micro_steps), message)
  if (.not. c_associated(ep)) call fail(message)

  ! Initialise from the motion at t_0; hand the added mass over; report at step 0 with the
  ! initial wrench held, so that the motions of the first step include it.
  t = ex%time
  k = ex%step
  mot => rbcf_motions(ex)
  if (.not. associated(mot)) call fail("the attach reply carries no motions")
  motion = mot(:, 1)
  want = 0
  if (coupling%added_mass /= 0) want = 1
  ! the added mass in C order, as rbcf_set_added_mass hands it on
  if (be_start(ep, t, motion, want, mass) /= 0) &
    call check(rbcf_set_added_mass(client, reshape(mass, [6, 6, 1]), ["inertial"]), &
               "set_added_mass")
  call be_report(ep, kin, energy)
  rows = be_polynomial(ep, t, coeff)
  call check(rbcf_report(client, ex, wrench=reshape(coeff(:, 1:rows), [6, rows, 1]), &
                         flex_kinematics=reshape(kin, [13, 1]), flex_energy=[energy]), &
             "report")
  motion = rbcf_motions_row(ex)

  ! One exchange in each direction per macro step (PROTOCOL.md 7a, item 4).
  do while (k < coupling%n_steps)
    call be_report(ep, kin, energy)
    rows = be_inputs(ep, t, motion, coeff)  ! flexible side first: the body steps here
    if (rows < 0) call fail("the structure's state is not finite")
    call check(rbcf_step_send(client, wrench=reshape(coeff(:, 1:rows), [6, rows, 1]), &
                              flex_kinematics=reshape(kin, [13, 1]), flex_energy=[energy]), &
               "step")
    if (scheme_id == BE_JACOBI) then  ! while the rigid side takes the same step
      if (be_finish(ep, t, motion, t, motion) /= 0) &
        call fail("the structure's state is not finite")
      call check(rbcf_step_wait(client, ex), "step")
    else
      call check(rbcf_step_wait(client, ex), "step")
      if (be_finish(ep, t, motion, ex%time, rbcf_motions_row(ex)) /= 0) &
        call fail("the structure's state is not finite")
    end if
    k = ex%step
    t = ex%time
    motion = rbcf_motions_row(ex)
  end do

  ! The final report: the server records the last result row.
  call be_report(ep, kin, energy)
  call check(rbcf_report(client, ex, flex_kinematics=reshape(kin, [13, 1]), &
                         flex_energy=[energy]), "report")
  write (output_unit, "(a, i0, a, es12.5, a, es12.5, a)") "done: ", k, " steps to t = ", t, &
    " s, energy delivered ", energy, " J"
  if (close_at_end) then
    call check(rbc_close_session(client), "close")
  else
    call check(rbc_detach(client), "detach")
  end if
  call rbc_destroy(client)
  call be_close(ep)

contains

  !> The motion row (19) of the one point in an exchange.
  function rbcf_motions_row(e) result(row)
    type(rbc_exchange), intent(in) :: e
    real(dp) :: row(19)
    real(c_double), pointer :: m(:, :)
    m => rbcf_motions(e)
    if (.not. associated(m)) call fail("a reply carries no motions")
    row = m(:, 1)
  end function rbcf_motions_row

  subroutine check(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what
    if (code == RBC_OK) return
    call fail(what // ": " // rbcf_error_code(client) // ": " // rbcf_error_message(client))
  end subroutine check

  subroutine fail(text)
    character(len=*), intent(in) :: text
    write (error_unit, "(a)") "two_mass_flex_f: " // text
    error stop 1
  end subroutine fail

  subroutine parse_arguments()
    character(len=4096) :: arg
    integer :: n, eq
    n = command_argument_count()
    point = "interface"
    joint = "coupling"
    timeout_s = 120.0_dp
    close_at_end = .false.
    allocate (keys(0), values(0))
    i = 1
    do while (i <= n)
      call get_command_argument(i, arg)
      select case (trim(arg))
      case ("--scenario")
        scenario = next_value()
      case ("--session")
        session = next_value()
      case ("--body")
        body = next_value()
      case ("--point")
        point = next_value()
      case ("--joint")
        joint = next_value()
      case ("--timeout")
        arg = next_value()
        read (arg, *) timeout_s
      case ("--set")
        arg = next_value()
        eq = index(arg, "=")
        if (eq < 2) call fail("--set: expected KEY=VALUE, got " // trim(arg))
        keys = [character(len=256) :: keys, adjustl(arg(:eq - 1))]
        values = [character(len=256) :: values, adjustl(arg(eq + 1:))]
      case ("--close")
        close_at_end = .true.
      case ("-h", "--help")
        call usage()
        stop
      case default
        if (arg(1:1) == "-" .or. allocated(endpoint)) call fail("unexpected " // trim(arg))
        endpoint = trim(arg)
      end select
      i = i + 1
    end do
    if (.not. allocated(endpoint) .or. (allocated(scenario) .eqv. allocated(session))) then
      call usage()
      error stop 2
    end if
    if (.not. allocated(body)) call fail("--body FILE.body is required (rbcosim export-body " // &
                                         "SCENARIO --body structure -o FILE.body)")
  end subroutine parse_arguments

  function next_value() result(v)
    character(len=:), allocatable :: v
    character(len=4096) :: arg
    if (i >= command_argument_count()) call fail("an option lacks its value")
    i = i + 1
    call get_command_argument(i, arg)
    v = trim(arg)
  end function next_value

  subroutine usage()
    write (error_unit, "(a)") "usage: two_mass_flex_f ENDPOINT (--scenario FILE | " // &
      "--session ID) --body FILE.body [--set KEY=VALUE]... [--point NAME] [--joint NAME] " // &
      "[--timeout S] [--close]"
  end subroutine usage

end program two_mass_flex
